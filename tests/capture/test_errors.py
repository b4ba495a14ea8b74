"""CUDA error parsing and the rule each failed capture maps to (CPU only)."""

import pytest

from graphcheck.capture import errors as E


class FakeAcceleratorError(RuntimeError):
    def __init__(self, message, code):
        super().__init__(message)
        self.error_code = code


def chained(inner, outer):
    try:
        try:
            raise inner
        except Exception:
            raise outer  # noqa: B904 - the test needs the implicit context, not a cause
    except Exception as exc:
        return exc


@pytest.mark.parametrize("number", [900, 901, 904, 905, 906, 700])
def test_documented_text_maps_to_number(number):
    name, text = E.CUDA_ERRORS[number]
    assert E.numbers_in_message(f"CUDA error: {text}\nCUDA kernel errors might be asynchronously reported") == [number]


def test_explicit_code_and_enum_name_are_read():
    assert E.numbers_in_message("cudaErrorStreamCaptureUnjoined returned") == [904]
    assert E.numbers_in_message("failed with error 905") == [905]
    assert E.numbers_in_message("nothing to see") == []


def test_chain_is_read_innermost_first_with_error_code_attribute():
    inner = RuntimeError("CUDA error: operation not permitted when stream is capturing")
    outer = FakeAcceleratorError("CUDA error: something reworded", 901)
    exc = chained(inner, outer)
    assert [e.number for e in E.cuda_errors(exc)] == [900, 901]
    assert E.cuda_errors(exc)[1].name == "cudaErrorStreamCaptureInvalidated"
    lines = E.first_lines(exc)
    assert lines[0].startswith("RuntimeError: CUDA error: operation not permitted")
    assert lines[-1].startswith("FakeAcceleratorError")


def test_pinned_copy_message_is_found_anywhere_in_chain():
    inner = RuntimeError(E.PINNED_COPY_MESSAGE + ".")
    outer = RuntimeError("CUDA error: operation failed due to a previous error during capture")
    exc = chained(inner, outer)
    assert E.has_pinned_copy_error(exc)
    assert not E.has_pinned_copy_error(inner.__class__("other"))


def test_sticky_errors():
    assert E.is_sticky(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert not E.is_sticky(RuntimeError("CUDA error: capturing stream has unjoined work"))


@pytest.mark.parametrize(
    "numbers, pinned, sync, foreign, expected",
    [
        ([900, 901], False, "GC101", False, "GC101"),  # the recorder's op wins
        ([900, 901], True, None, False, "GC301"),
        ([904], False, None, True, "GC202"),
        ([904], False, None, False, "GC202"),
        ([906], False, None, False, "GC201"),
        ([901], False, None, True, "GC202"),  # ops on a stream outside the capture
        ([905], False, None, False, "GC202"),
        ([900, 901], False, None, False, "GC112"),
        ([901], False, None, False, "GC207"),
        ([], False, None, False, "GC207"),
    ],
)
def test_rule_for_failure(numbers, pinned, sync, foreign, expected):
    errs = [E.error_from_number(n) for n in numbers]
    blame = E.rule_for_failure(errs, pinned_copy=pinned, sync_code=sync, foreign_stream_ops=foreign)
    assert blame.code == expected
    assert blame.reason
