"""Host values through containers: a name bound once to a tuple literal and unpacked later gives each
unpacked name its own element's kinds (`snap = (lens.cpu().tolist(), table.cpu()); sl, bt = snap`), and the
elements of a list of host values (`[bt[i] for i in r]` of a `.cpu()` copy) are host values."""

from __future__ import annotations

from lint_trees import lint_module

HEAD = """
    def launch(x, lens, table):
        kern[(1,)](x, 1, BLOCK=64)
"""


def syncs(body: str) -> list[tuple[str, str]]:
    return [(code, line) for code, _sev, line, _msg in lint_module(HEAD + body) if code in ("GC102", "GC103")]


def test_a_host_copy_unpacked_from_a_tuple_variable_is_a_host_value():
    body = """
        snap = (lens.cpu().tolist(), table.cpu())
        sl, bt = snap
        return int(bt.min()), bt[0].tolist()
    """
    assert syncs(body) == []


def test_a_device_tensor_unpacked_from_a_tuple_variable_still_syncs():
    body = """
        snap = (lens.cpu().tolist(), table)
        sl, bt = snap
        return int(bt.min())
    """
    assert syncs(body) == [("GC102", "return int(bt.min())")]


def test_a_tuple_variable_bound_twice_is_not_unpacked_by_element():
    # which literal reaches the unpack is not known: the unpacked names take the kinds of both values
    body = """
        snap = (lens.cpu().tolist(), table.cpu())
        if x.numel() > 4:
            snap = (lens.cpu().tolist(), table)
        sl, bt = snap
        return int(bt.min())
    """
    assert ("GC102", "return int(bt.min())") in syncs(body)


def test_elements_of_a_list_of_host_tensor_slices_are_host_values():
    # exllamav3's fault dump: slices of a `.cpu()` copy, read back one by one
    body = """
        bt = table.cpu()
        used = [bt[i, :4] for i in range(3)]
        first = [u.tolist() for u in used]
        for u in used:
            print(int(u.min()))
        return first
    """
    assert syncs(body) == []


def test_elements_of_a_list_of_device_tensor_slices_still_sync():
    body = """
        used = [table[i, :4] for i in range(3)]
        for u in used:
            print(int(u.min()))
        return [u.tolist() for u in used]
    """
    assert syncs(body) == [("GC102", "print(int(u.min()))"), ("GC103", "return [u.tolist() for u in used]")]
