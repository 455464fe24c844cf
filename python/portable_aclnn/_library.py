"""Loading the three libraries and calling the aclnn API through ctypes.

The libraries are found, in this order, in the package's own lib/ (a wheel, `pip install .`), in
$PORTABLE_ACLNN_LIBRARY_DIR, in the directory recorded when the package was installed (_install_dir.py, written by
`cmake --install`), in a build directory of a source checkout (build/ next to python/), and on the system's library
path. The operators' functions and their argument types come from the operator modules (portable_aclnn.ops).
"""

import ctypes
import ctypes.util
import os
import sys
import threading

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
LIBRARIES = ("ascendcl", "nnopbase", "opapi")  # in load order: each needs the ones before it


class AclnnError(RuntimeError):
    """An aclnn or runtime call failed: `status` is its status code, `message` aclGetRecentErrMsg's text."""

    def __init__(self, function, status, message):
        self.function = function
        self.status = status
        self.message = message
        super().__init__(f"{function} failed with status {status}: {message or '(no message recorded)'}")


def _candidate_dirs():
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "lib")  # a wheel's own copies (pip install .)
    explicit = os.environ.get("PORTABLE_ACLNN_LIBRARY_DIR")
    if explicit:
        yield explicit
    try:
        from . import _install_dir  # written by cmake --install

        yield _install_dir.LIBRARY_DIR
    except ImportError:
        pass
    yield os.path.join(here, "..", "..", "build")


def _load(name):
    """(the loaded library, its path)."""
    for directory in _candidate_dirs():
        for file_name in (f"lib{name}.so", f"lib{name}.so.0"):  # a build's link name, or the soname (wheels)
            path = os.path.join(directory, file_name)
            if os.path.exists(path):
                return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), os.path.realpath(path)
    found = ctypes.util.find_library(name)
    if found is None:
        raise OSError(
            f"portable_aclnn: lib{name}.so not found; set PORTABLE_ACLNN_LIBRARY_DIR to the directory that holds "
            "libascendcl.so, libnnopbase.so and libopapi.so (an install prefix's lib/ or a build directory), or "
            "install the package with `pip install .` from the repository root (docs/python.md)")
    return ctypes.CDLL(found, mode=ctypes.RTLD_GLOBAL), found


_p = ctypes.c_void_p
_u64 = ctypes.c_uint64
_i64p = ctypes.POINTER(ctypes.c_int64)
_u64p = ctypes.POINTER(ctypes.c_uint64)
_pp = ctypes.POINTER(ctypes.c_void_p)


class TensorHandle(ctypes.c_void_p):
    """An aclTensor * returned by aclCreateTensor, kept as a ctypes object (NULL: .value is None)."""


# name: (library, restype, argtypes)
_SIGNATURES = {
    "aclInit": ("ascendcl", ctypes.c_int, [ctypes.c_char_p]),
    "aclrtSetDevice": ("ascendcl", ctypes.c_int, [ctypes.c_int32]),
    "aclrtCreateStream": ("ascendcl", ctypes.c_int, [_pp]),
    "aclrtSynchronizeStream": ("ascendcl", ctypes.c_int, [_p]),
    "aclrtGetDeviceCount": ("ascendcl", ctypes.c_int, [ctypes.POINTER(ctypes.c_uint32)]),
    "aclrtGetSocName": ("ascendcl", ctypes.c_char_p, []),
    "aclrtGetCurrentContext": ("ascendcl", ctypes.c_int, [_pp]),
    "aclrtSetCurrentContext": ("ascendcl", ctypes.c_int, [_p]),
    "paclrtCreateStreamFromNative": ("ascendcl", ctypes.c_int, [_pp, _p]),
    "aclrtMalloc": ("ascendcl", ctypes.c_int, [_pp, ctypes.c_size_t, ctypes.c_int]),
    "aclrtFree": ("ascendcl", ctypes.c_int, [_p]),
    "aclGetRecentErrMsg": ("ascendcl", ctypes.c_char_p, []),
    "paclSetNumThreads": ("nnopbase", ctypes.c_int, [ctypes.c_int32]),
    # Made and destroyed three to nine times a call: no argtypes (their conversions cost more than the C calls), so
    # _tensors.py passes every argument as its exact ctypes type (see _tensors._create), and the handle comes back as
    # a TensorHandle (a c_void_p subclass: ctypes does not turn it into an int, so it passes back as a pointer).
    "aclCreateTensor": ("nnopbase", TensorHandle, None),
    "aclDestroyTensor": ("nnopbase", ctypes.c_int, None),
    "aclCreateBoolArray": ("nnopbase", _p, [ctypes.POINTER(ctypes.c_bool), _u64]),
    "aclDestroyBoolArray": ("nnopbase", ctypes.c_int, [_p]),
    "aclCreateIntArray": ("nnopbase", _p, [_i64p, _u64]),
    "aclDestroyIntArray": ("nnopbase", ctypes.c_int, [_p]),
    "aclDestroyAclOpExecutor": ("nnopbase", ctypes.c_int, [_p]),
}
_WORKSPACE_AND_EXECUTOR = [_u64p, _pp]  # the last two arguments of every aclnnXxxGetWorkspaceSize
_PHASE2_ARGTYPES = [_p, _u64, _p, _p]  # aclnnXxx(workspace, workspaceSize, executor, stream)


def _signatures():
    """The runtime's functions above, and each operator's two (from its module's ACLNN declarations)."""
    from .ops import aclnn_calls

    signatures = dict(_SIGNATURES)
    for call in aclnn_calls():
        signatures[call.name + "GetWorkspaceSize"] = ("opapi", ctypes.c_int,
                                                      list(call.phase1_argtypes) + _WORKSPACE_AND_EXECUTOR)
        signatures[call.name] = ("opapi", ctypes.c_int, _PHASE2_ARGTYPES)
    return signatures, [call.name for call in aclnn_calls()]


# Set beside ACLNN_NUM_THREADS when the package chose the value (from PyTorch's count), so that a child process, which
# inherits both, makes its own choice rather than taking the parent's for the user's.
_THREADS_MARK = "PORTABLE_ACLNN_NUM_THREADS_FROM_TORCH"


def torch_thread_count():
    """PyTorch's intra-op thread count when the program or its launcher has set it, else None. Set means:
    OMP_NUM_THREADS or MKL_NUM_THREADS is in the environment (torchrun sets OMP_NUM_THREADS), or
    torch.get_num_threads() differs from PyTorch's default, which is also the inter-op count's default (the
    machine's physical cores, as PyTorch's cpuinfo counts them): torch.set_num_threads was called."""
    torch = sys.modules.get("torch")
    if getattr(torch, "get_num_threads", None) is None or getattr(torch, "get_num_interop_threads", None) is None:
        return None
    count = torch.get_num_threads()
    if (os.environ.get("OMP_NUM_THREADS") or os.environ.get("MKL_NUM_THREADS")
            or count != torch.get_num_interop_threads()):
        return count
    return None


def _follow_torch_threads():
    """Before the libraries load: ACLNN_NUM_THREADS (the kernels' threads, read once by the C library at its first
    parallel loop) from PyTorch's count when that has been set and ACLNN_NUM_THREADS has not (docs/python.md,
    "Threads"). Returns the count the kernels will use, or None for the C library's default (every CPU of the
    process's affinity mask)."""
    chosen = os.environ.get("ACLNN_NUM_THREADS")
    if chosen is not None and os.environ.get(_THREADS_MARK) != chosen:
        return int(chosen) if chosen.strip().isdigit() else None  # the user's (the C library checks its range)
    count = torch_thread_count()
    if count is None:
        os.environ.pop(_THREADS_MARK, None)
        if chosen is not None:  # a parent process's choice, inherited: not this process's
            del os.environ["ACLNN_NUM_THREADS"]
        return None
    os.environ["ACLNN_NUM_THREADS"] = os.environ[_THREADS_MARK] = str(count)
    return count


class _Device:
    """One aclnn device the package uses: its context, and the streams calls run on."""

    def __init__(self, context, torch_device=None):
        self.context = context
        self.torch_device = torch_device  # a GPU's torch.device (its workspaces are PyTorch's)
        self.stream = None  # the CPU's own stream
        self.native_streams = {}  # a GPU's: aclrtStream over each PyTorch stream used, by cudaStream_t


class _Api:
    """The loaded functions (attributes named as in C), the devices and streams, and the call sequence."""

    def __init__(self):
        # The package passes host memory (CPU tensors, NumPy arrays) to the CPU device and CUDA tensors to the GPUs:
        # it needs both, which "cuda,cpu" numbers as the GPUs 0..n-1 and the CPU n (n = 0 without GPUs or a CUDA
        # build). Unset, ACLNN_DEVICE means "auto", the GPUs alone where there are any. A value the program set is
        # left alone.
        os.environ.setdefault("ACLNN_DEVICE", "cuda,cpu")
        chosen = os.environ.get("ACLNN_NUM_THREADS")
        self._threads_from_user = chosen is not None and os.environ.get(_THREADS_MARK) != chosen
        self.num_threads = _follow_torch_threads()
        torch = sys.modules.get("torch")
        self._torch_threads_seen = torch.get_num_threads() if hasattr(torch, "get_num_threads") else None
        loaded = {name: _load(name) for name in LIBRARIES}
        self.library_paths = {name: path for name, (_, path) in loaded.items()}
        signatures, operators = _signatures()
        for name, (library, restype, argtypes) in signatures.items():
            function = getattr(loaded[library][0], name)
            function.restype = restype
            if argtypes is not None:
                function.argtypes = argtypes
            setattr(self, name, function)
        self.phase1 = {op: getattr(self, op + "GetWorkspaceSize") for op in operators}
        self.phase2 = {op: getattr(self, op) for op in operators}
        self.check("aclInit", self.aclInit(None), accept=(100002,))  # 100002: initialised already
        count = ctypes.c_uint32(0)
        self.check("aclrtGetDeviceCount", self.aclrtGetDeviceCount(ctypes.byref(count)))
        # The CPU, where there is one, is the last device ("cuda,cpu", or "cpu" alone; not with "cuda" or "auto" on
        # a machine with GPUs).
        last = self._open_device(count.value - 1)
        soc_name = (self.aclrtGetSocName() or b"").decode("utf-8", "replace")
        self.gpu_count = count.value - 1 if soc_name.startswith("CPU") else count.value
        self.gpus = {}
        self.cpu = None
        if self.gpu_count < count.value:
            self.cpu = last
            stream = ctypes.c_void_p()
            self.check("aclrtCreateStream", self.aclrtCreateStream(ctypes.byref(stream)))
            self.cpu.stream = stream
        else:
            self.gpus[count.value - 1] = last
        self.lock = threading.Lock()

    def _open_device(self, device_id):
        """Sets device_id (its default context, made current on this thread) and returns it as a _Device."""
        self.check("aclrtSetDevice", self.aclrtSetDevice(device_id))
        context = ctypes.c_void_p()
        self.check("aclrtGetCurrentContext", self.aclrtGetCurrentContext(ctypes.byref(context)))
        return _Device(context)

    def recent_error(self):
        message = self.aclGetRecentErrMsg()
        return message.decode("utf-8", "replace") if message else ""

    def check(self, function, status, accept=()):
        if status != ACL_SUCCESS and status not in accept:
            raise AclnnError(function, status, self.recent_error())

    def _phase1(self, op, phase1_args):
        workspace_size = ctypes.c_uint64(0)
        executor = ctypes.c_void_p()
        status = self.phase1[op](*phase1_args, ctypes.byref(workspace_size), ctypes.byref(executor))
        if status != ACL_SUCCESS:
            raise AclnnError(op + "GetWorkspaceSize", status, self.recent_error())
        return workspace_size.value, executor

    def follow_torch_threads(self):
        """Before each CPU call: a PyTorch thread count that changed since the last call (torch.set_num_threads, or
        PyTorch imported since, with its count set) becomes the kernels' (paclSetNumThreads), unless ACLNN_NUM_THREADS
        is the user's (docs/python.md, "Threads")."""
        if self._threads_from_user:
            return
        get_num_threads = getattr(sys.modules.get("torch"), "get_num_threads", None)
        if get_num_threads is None:
            return
        count = get_num_threads()
        if count == self._torch_threads_seen:
            return
        first_sight = self._torch_threads_seen is None
        self._torch_threads_seen = count
        if first_sight and torch_thread_count() is None:
            return  # PyTorch imported after the first call, at its default: the C default stays
        self.check("paclSetNumThreads", self.paclSetNumThreads(count))
        self.num_threads = count
        os.environ["ACLNN_NUM_THREADS"] = os.environ[_THREADS_MARK] = str(count)

    def run(self, op, operands, *phase1_args):
        """One call, on the device of its arrays (operands: the _tensors.Operands that made phase1_args' tensors):
        the CPU device for host memory, else the CUDA device of the call's tensors."""
        cuda_index = operands.cuda_index
        if cuda_index is not None:
            return self._run_on_gpu(op, cuda_index, phase1_args)
        cpu = self.cpu
        if cpu is None:
            raise ValueError(f"{op}: host memory needs the CPU device, and this process's devices have none "
                             f"(ACLNN_DEVICE={os.environ.get('ACLNN_DEVICE')}; the package's default is cuda,cpu)")
        self.follow_torch_threads()
        # CANN's sequence: phase 1, a workspace from aclrtMalloc, phase 2, synchronise, free.
        status = self.aclrtSetCurrentContext(cpu.context)
        if status != ACL_SUCCESS:
            raise AclnnError("aclrtSetCurrentContext", status, self.recent_error())
        workspace_size, executor = self._phase1(op, phase1_args)
        workspace = None
        if workspace_size > 0:
            workspace = ctypes.c_void_p()
            status = self.aclrtMalloc(ctypes.byref(workspace), workspace_size, ACL_MEM_MALLOC_HUGE_FIRST)
            if status != ACL_SUCCESS:
                message = self.recent_error()
                self.aclDestroyAclOpExecutor(executor)
                raise AclnnError("aclrtMalloc", status, message)
        try:
            status = self.phase2[op](workspace, workspace_size, executor, cpu.stream)
            if status != ACL_SUCCESS:
                raise AclnnError(op, status, self.recent_error())
            status = self.aclrtSynchronizeStream(cpu.stream)
            if status != ACL_SUCCESS:
                raise AclnnError("aclrtSynchronizeStream", status, self.recent_error())
        finally:
            if workspace is not None:
                self.aclrtFree(workspace)

    def host_malloc(self, nbytes):
        """A block of host memory from the CPU device's aclrtMalloc (its freed blocks are kept for reuse)."""
        if self.cpu is None:
            raise ValueError("host memory needs the CPU device, and this process's devices have none")
        block = ctypes.c_void_p()
        self.check("aclrtSetCurrentContext", self.aclrtSetCurrentContext(self.cpu.context))
        self.check("aclrtMalloc", self.aclrtMalloc(ctypes.byref(block), nbytes, ACL_MEM_MALLOC_HUGE_FIRST))
        return block.value

    def host_free(self, block):
        self.aclrtFree(block)

    def _gpu(self, index):
        device = self.gpus.get(index)
        if device is not None:
            return device
        if index >= self.gpu_count:
            raise ValueError(
                f"tensors on cuda:{index} need portable_aclnn's CUDA device {index}, and this process has "
                f"{self.gpu_count} (a build with the CUDA backend, and ACLNN_DEVICE=cuda,cpu, the package's default, "
                f"or cuda; it is {os.environ.get('ACLNN_DEVICE')})")
        with self.lock:
            if index not in self.gpus:
                self.gpus[index] = self._open_device(index)
        return self.gpus[index]

    def _run_on_gpu(self, op, index, phase1_args):
        """A call on PyTorch's current stream of CUDA device index, as PyTorch's own operators run: asynchronous, a
        workspace from PyTorch's caching allocator (freed memory is reused in stream order), no synchronisation."""
        device = self.gpus.get(index) or self._gpu(index)
        cuda = _torch_cuda()
        if device.torch_device is None:
            device.torch_device = cuda.torch.device("cuda", index)
        # The run makes its GPU current on this thread (cudaSetDevice): PyTorch's current device is put back after.
        if cuda.current_device() != index:
            with cuda.torch.cuda.device(index):
                return self._launch_on_gpu(op, device, index, phase1_args, cuda)
        return self._launch_on_gpu(op, device, index, phase1_args, cuda)

    def _launch_on_gpu(self, op, device, index, phase1_args, cuda):
        native = cuda.current_raw_stream(index)
        status = self.aclrtSetCurrentContext(device.context)
        if status != ACL_SUCCESS:
            raise AclnnError("aclrtSetCurrentContext", status, self.recent_error())
        stream = device.native_streams.get(native)
        if stream is None:
            with self.lock:
                stream = device.native_streams.get(native)
                if stream is None:
                    stream = ctypes.c_void_p()
                    self.check("paclrtCreateStreamFromNative",
                               self.paclrtCreateStreamFromNative(ctypes.byref(stream), native or None))
                    device.native_streams[native] = stream
        workspace_size, executor = self._phase1(op, phase1_args)
        workspace = None
        if workspace_size > 0:
            workspace = cuda.torch.empty((workspace_size,), dtype=cuda.torch.uint8, device=device.torch_device)
        status = self.phase2[op](workspace.data_ptr() if workspace is not None else None, workspace_size, executor,
                                 stream)
        if status != ACL_SUCCESS:
            raise AclnnError(op, status, self.recent_error())


class _TorchCuda:
    """PyTorch's current CUDA device and stream, by the quickest calls this PyTorch has: a small call on CUDA tensors
    pays for these every time (torch.cuda.current_stream() makes a Stream object; its private raw getter, which
    torch.compile's generated code uses, returns the cudaStream_t alone)."""

    def __init__(self):
        import torch

        self.torch = torch
        get_device = getattr(torch._C, "_cuda_getDevice", None)
        self.current_device = get_device if get_device is not None else torch.cuda.current_device
        raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self.current_raw_stream = raw_stream if raw_stream is not None else (
            lambda index: torch.cuda.current_stream(index).cuda_stream)


_torch_cuda_instance = None


def _torch_cuda():
    global _torch_cuda_instance
    if _torch_cuda_instance is None:
        _torch_cuda_instance = _TorchCuda()
    return _torch_cuda_instance


_api = None
_api_lock = threading.Lock()


def api():
    """The process's _Api, loaded on first use."""
    global _api
    if _api is not None:
        return _api
    with _api_lock:
        if _api is None:
            _api = _Api()
        return _api
