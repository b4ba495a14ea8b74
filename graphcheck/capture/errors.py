"""CUDA errors seen when a capture fails, and which rule each one points at.

The exception PyTorch raises when a capture fails is usually the last link of a
chain: the op that broke the capture raises first (e.g. error 900 from
``.item()``), then ``capture_end`` raises error 901 while handling it. We walk
the whole chain (``__cause__`` / ``__context__``) and read every CUDA error in
it, from ``torch.AcceleratorError.error_code`` where present, else from the
message text (the CUDA runtime's documented error strings). Nothing here
imports torch.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator

#: CUDA runtime error number -> (enum name, the runtime's error string).
CUDA_ERRORS: dict[int, tuple[str, str]] = {
    900: ("cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"),
    901: ("cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"),
    902: ("cudaErrorStreamCaptureMerge", "operation would result in a merge of separate capture sequences"),
    903: ("cudaErrorStreamCaptureUnmatched", "capture was not initiated in this stream"),
    904: ("cudaErrorStreamCaptureUnjoined", "capturing stream has unjoined work"),
    905: ("cudaErrorStreamCaptureIsolation", "dependency created on uncaptured work in another stream"),
    906: ("cudaErrorStreamCaptureImplicit",
          "operation would make the legacy stream depend on a capturing blocking stream"),
    907: ("cudaErrorCapturedEvent", "operation not permitted on an event last recorded in a capturing stream"),
    908: ("cudaErrorStreamCaptureWrongThread",
          "attempt to terminate a thread-local capture sequence from another thread"),
    700: ("cudaErrorIllegalAddress", "an illegal memory access was encountered"),
    710: ("cudaErrorAssert", "device-side assert triggered"),
    714: ("cudaErrorHardwareStackError", "an illegal instruction was encountered"),
    715: ("cudaErrorIllegalInstruction", "an illegal instruction was encountered"),
    716: ("cudaErrorMisalignedAddress", "misaligned address"),
    717: ("cudaErrorInvalidAddressSpace", "operation not supported on global/shared address space"),
    718: ("cudaErrorInvalidPc", "invalid program counter"),
    719: ("cudaErrorLaunchFailure", "unspecified launch failure"),
}

#: Errors after which the CUDA context is unusable: the rest of the case cannot run.
STICKY_ERRORS = frozenset({700, 710, 714, 715, 716, 717, 718, 719})

PINNED_COPY_MESSAGE = (
    "Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned"
)

_BY_TEXT = sorted(((text.lower(), num) for num, (_, text) in CUDA_ERRORS.items()), key=lambda p: -len(p[0]))
_NUMBER = re.compile(r"\b(?:error|code)\s*[:=#]?\s*\(?(\d{3})\b", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class CudaError:
    """One CUDA error found in an exception chain."""

    number: int
    name: str
    text: str

    def describe(self) -> str:
        return f"CUDA error {self.number} {self.name}: {self.text}"

    def to_dict(self) -> dict:
        return {"number": self.number, "name": self.name, "text": self.text}


def error_from_number(number: int) -> CudaError:
    name, text = CUDA_ERRORS.get(number, (f"cudaError{number}", "unknown CUDA error"))
    return CudaError(number, name, text)


def numbers_in_message(message: str) -> list[int]:
    """CUDA error numbers named by a message, by documented text or an explicit code."""
    low = message.lower()
    found: list[int] = []
    for text, num in _BY_TEXT:
        if text in low and num not in found:
            found.append(num)
    for name_num, (name, _) in CUDA_ERRORS.items():
        if name.lower() in low and name_num not in found:
            found.append(name_num)
    for match in _NUMBER.finditer(message):
        num = int(match.group(1))
        if num in CUDA_ERRORS and num not in found:
            found.append(num)
    return found


def exception_chain(exc: BaseException | None) -> list[BaseException]:
    """The exception and the ones it was raised from or while handling, innermost first."""
    chain: list[BaseException] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        chain.append(exc)
        exc = exc.__cause__ if exc.__cause__ is not None else exc.__context__
    chain.reverse()
    return chain


def cuda_errors(exc: BaseException | None) -> list[CudaError]:
    """Every CUDA error in the chain of ``exc``, the earliest first, without repeats."""
    numbers: list[int] = []
    for link in exception_chain(exc):
        code = getattr(link, "error_code", None)
        candidates: list[int] = []
        if isinstance(code, int) and code > 0:
            candidates.append(code)
        candidates.extend(numbers_in_message(str(link)))
        for num in candidates:
            if num not in numbers:
                numbers.append(num)
    return [error_from_number(n) for n in numbers]


def has_pinned_copy_error(exc: BaseException | None) -> bool:
    return any(PINNED_COPY_MESSAGE.lower() in str(link).lower() for link in exception_chain(exc))


def first_lines(exc: BaseException | None, limit: int = 4) -> list[str]:
    """``Type: first line`` of each exception in the chain, for evidence."""
    out = []
    for link in exception_chain(exc)[-limit:]:
        text = str(link).strip().splitlines()
        out.append(f"{type(link).__name__}: {text[0] if text else ''}"[:300])
    return out


def is_sticky(exc: BaseException | None) -> bool:
    return any(err.number in STICKY_ERRORS for err in cuda_errors(exc))


def iter_numbers(errors: list[CudaError]) -> Iterator[int]:
    return (e.number for e in errors)


@dataclasses.dataclass(frozen=True)
class Blame:
    """Which rule a failed capture points at, and why."""

    code: str
    reason: str


def rule_for_failure(
    errors: list[CudaError],
    *,
    pinned_copy: bool,
    sync_code: str | None,
    foreign_stream_ops: bool,
) -> Blame:
    """Pick the rule for a failed capture.

    Order matters: an op the trace recorder flagged as host-syncing is the most
    specific evidence; then PyTorch's pinned-copy message; then the CUDA error.
    """
    numbers = set(iter_numbers(errors))
    if sync_code:
        return Blame(sync_code, "the last host-syncing op seen before the capture failed")
    if pinned_copy:
        return Blame("GC301", "PyTorch refused a pageable host-to-device copy during capture")
    if 904 in numbers:
        return Blame("GC202", "work forked to a side stream was not joined back")
    if 906 in numbers:
        return Blame("GC201", "the legacy default stream was used while a blocking stream was capturing")
    if foreign_stream_ops and numbers & {901, 905, 900}:
        return Blame("GC202", "ops ran on a stream that was not part of the capture")
    if 905 in numbers:
        return Blame("GC202", "the capture depended on work on a stream outside the capture")
    if 900 in numbers:
        return Blame("GC112", "an operation that synchronizes or is not permitted ran during capture")
    return Blame("GC207", "no op could be blamed")
