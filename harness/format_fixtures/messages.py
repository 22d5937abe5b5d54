"""Message texts: fixed strings and builders that depend only on the versions (no job state)."""

from __future__ import annotations

from .model import Work
from .versions import Versions

SIGNALS = {6: "SIGABRT", 9: "SIGKILL", 15: "SIGTERM", 11: "SIGSEGV"}

WARN_NCCL_ENV = (
    "Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated; use "
    "TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function getCvarInt)"
)
DESTRUCT_WARN = (
    "Warning: WARNING: process group has NOT been destroyed before we destruct "
    "ProcessGroupNCCL. On normal program exit, the application should call "
    "destroy_process_group to ensure that any pending NCCL operations have finished in this "
    "process. In rare cases this process can exit before this point and block the progress of "
    "another member of the process group. This constraint has always been present,  but this "
    "warning has only been added since PyTorch 2.4 (function operator())"
)
HANDLE1 = (
    "Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
    "kernels, subsequent GPU operations might run on corrupted/incomplete data."
)
HANDLE2 = "To avoid data inconsistency, we are taking the entire process down."
FR_MISSING = (
    "Stack trace of the failed collective not found, potentially because FlightRecorder is "
    "disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value."
)
DUMP_REASON = (
    "This is most likely caused by incorrect usages of collectives, e.g., wrong sizes used "
    "across ranks, the order of collectives is not same for all ranks or the scheduled "
    "collective, for some reason, didn't run. Additionally, this can be caused by GIL deadlock "
    "or other reasons such as network errors or bugs in the communications library (e.g. "
    "NCCL), etc. "
)
ELASTIC_DOC = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"


def work_text(v: Versions, w: Work) -> str:
    """WorkNCCL(...) as the watchdog describes a collective (reference §1.2)."""
    if v.t <= (2, 0):
        return f"WorkNCCL(SeqNum={w.seq}, OpType={w.op}, Timeout(ms)={w.timeout_ms})"
    return (
        f"WorkNCCL(SeqNum={w.seq}, OpType={w.op}, NumelIn={w.numel_in}, "
        f"NumelOut={w.numel_out}, Timeout(ms)={w.timeout_ms})"
    )


def cuda_error_text(v: Versions, *, error: str, enum: str) -> str:
    """PyTorch's CUDA error text (reference §7.1); ends with a newline from 2.0 on.

    ``error`` is cudaGetErrorString's text, ``enum`` the cudaError_t name (2.9+ links it).
    """
    tv = v.t
    if tv <= (1, 13):
        return (
            f"CUDA error: {error}\nCUDA kernel errors might be asynchronously reported at some "
            "other API call,so the stacktrace below might be incorrect.\nFor debugging "
            "consider passing CUDA_LAUNCH_BLOCKING=1."
        )
    lead = f"CUDA error: {error}\n"
    if tv >= (2, 9):
        lead += (
            f"Search for `{enum}' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
            "group__CUDART__TYPES.html for more information.\n"
        )
    period = "." if tv <= (2, 3) else ""
    return (
        lead + "CUDA kernel errors might be asynchronously reported at some other API call, "
        "so the stacktrace below might be incorrect.\nFor debugging consider passing "
        f"CUDA_LAUNCH_BLOCKING=1{period}\nCompile with `TORCH_USE_CUDA_DSA` to enable "
        "device-side assertions.\n"
    )


def oom_text(
    v: Versions,
    *,
    tried: str,
    gpu: int,
    capacity: str,
    free: str,
    allocated: str,
    in_use: str = "",
    unallocated: str = "",
    reserved: str = "",
) -> str:
    """Caching-allocator OOM message (reference §3.1); sizes as PyTorch prints them ("7.82 GiB").

    ``in_use`` and ``unallocated`` are in the 2.1+ template only, ``reserved`` in the 1.13 – 2.0
    one only.
    """
    tv = v.t
    if tv <= (2, 0):
        return (
            f"CUDA out of memory. Tried to allocate {tried} (GPU {gpu}; {capacity} total "
            f"capacity; {allocated} already allocated; {free} free; {reserved} reserved in total "
            "by PyTorch) If reserved memory is >> allocated memory try setting "
            "max_split_size_mb to avoid fragmentation.  See documentation for Memory "
            "Management and PYTORCH_CUDA_ALLOC_CONF"
        )
    proc = f"Including non-PyTorch memory, this process has {in_use} memory in use. "
    hint = (
        "If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )
    return (
        f"CUDA out of memory. Tried to allocate {tried}. GPU {gpu} has a total capacity of "
        f"{capacity} of which {free} is free. {proc}Of the allocated memory {allocated} is "
        f"allocated by PyTorch, and {unallocated} is reserved by PyTorch but unallocated. {hint}"
    )


def nccl_error_text(v: Versions, *, err: str, detail: str, last_error: str) -> str:
    """The `NCCL error: ...` text torch raises for a failed NCCL call (reference §1.9)."""
    return f"NCCL error: {err}, NCCL version {v.nccl}\n{detail}\nLast error:\n{last_error}"


def nccl_remote_error_text(v: Versions, last_error: str) -> str:
    """`ncclRemoteError`: a peer vanished or the network failed; ``last_error`` is the WARN."""
    return nccl_error_text(
        v,
        err="remote process exited or there was a network error",
        detail="ncclRemoteError: A call failed possibly due to a network error or a "
        "remote process exiting prematurely.",
        last_error=last_error,
    )
