"""Loading the three libraries and calling the aclnn API through ctypes.

The libraries are found, in this order, in $PORTABLE_ACLNN_LIBRARY_DIR, in the directory recorded when the package
was installed (_install_dir.py, written by `cmake --install`), in a build directory of a source checkout
(build/ next to python/), and on the system's library path.
"""

import ctypes
import ctypes.util
import os
import threading

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0


class AclnnError(RuntimeError):
    """An aclnn or runtime call failed: `status` is its status code, `message` aclGetRecentErrMsg's text."""

    def __init__(self, function, status, message):
        self.function = function
        self.status = status
        self.message = message
        super().__init__(f"{function} failed with status {status}: {message or '(no message recorded)'}")


def _candidate_dirs():
    explicit = os.environ.get("PORTABLE_ACLNN_LIBRARY_DIR")
    if explicit:
        yield explicit
    try:
        from . import _install_dir  # written by cmake --install

        yield _install_dir.LIBRARY_DIR
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "..", "..", "build")


def _load(name):
    for directory in _candidate_dirs():
        path = os.path.join(directory, f"lib{name}.so")
        if os.path.exists(path):
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    found = ctypes.util.find_library(name)
    if found is None:
        raise OSError(
            f"portable_aclnn: lib{name}.so not found; set PORTABLE_ACLNN_LIBRARY_DIR to the directory that holds "
            "libascendcl.so, libnnopbase.so and libopapi.so (an install prefix's lib/ or a build directory)")
    return ctypes.CDLL(found, mode=ctypes.RTLD_GLOBAL)


_p = ctypes.c_void_p
_i64 = ctypes.c_int64
_u64 = ctypes.c_uint64
_i64p = ctypes.POINTER(ctypes.c_int64)
_u64p = ctypes.POINTER(ctypes.c_uint64)
_pp = ctypes.POINTER(ctypes.c_void_p)

# name: (library, restype, argtypes)
_SIGNATURES = {
    "aclInit": ("ascendcl", ctypes.c_int, [ctypes.c_char_p]),
    "aclrtSetDevice": ("ascendcl", ctypes.c_int, [ctypes.c_int32]),
    "aclrtCreateStream": ("ascendcl", ctypes.c_int, [_pp]),
    "aclrtSynchronizeStream": ("ascendcl", ctypes.c_int, [_p]),
    "aclrtMalloc": ("ascendcl", ctypes.c_int, [_pp, ctypes.c_size_t, ctypes.c_int]),
    "aclrtFree": ("ascendcl", ctypes.c_int, [_p]),
    "aclGetRecentErrMsg": ("ascendcl", ctypes.c_char_p, []),
    "aclCreateTensor": ("nnopbase", _p, [_i64p, _u64, ctypes.c_int, _i64p, _i64, ctypes.c_int, _i64p, _u64, _p]),
    "aclDestroyTensor": ("nnopbase", ctypes.c_int, [_p]),
    "aclCreateBoolArray": ("nnopbase", _p, [ctypes.POINTER(ctypes.c_bool), _u64]),
    "aclDestroyBoolArray": ("nnopbase", ctypes.c_int, [_p]),
    "aclCreateIntArray": ("nnopbase", _p, [_i64p, _u64]),
    "aclDestroyIntArray": ("nnopbase", ctypes.c_int, [_p]),
    "aclDestroyAclOpExecutor": ("nnopbase", ctypes.c_int, [_p]),
    "aclnnScaledMaskedSoftmaxGetWorkspaceSize":
        ("opapi", ctypes.c_int, [_p, _p, ctypes.c_double, ctypes.c_bool, _p, _u64p, _pp]),
    "aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize":
        ("opapi", ctypes.c_int, [_p, _p, _p, ctypes.c_double, ctypes.c_bool, _p, _u64p, _pp]),
    "aclnnGridSampler2DGetWorkspaceSize": ("opapi", ctypes.c_int, [_p, _p, _i64, _i64, ctypes.c_bool, _p, _u64p, _pp]),
    "aclnnGridSampler2DBackwardGetWorkspaceSize":
        ("opapi", ctypes.c_int, [_p, _p, _p, _i64, _i64, ctypes.c_bool, _p, _p, _p, _u64p, _pp]),
    "aclnnMultiScaleDeformableAttnFunctionGetWorkspaceSize": ("opapi", ctypes.c_int, [_p] * 6 + [_u64p, _pp]),
    "aclnnMultiScaleDeformableAttentionGradGetWorkspaceSize": ("opapi", ctypes.c_int, [_p] * 9 + [_u64p, _pp]),
    "aclnnNsaCompressGetWorkspaceSize":
        ("opapi", ctypes.c_int, [_p, _p, _p, ctypes.c_char_p, _i64, _i64, _i64, _p, _u64p, _pp]),
    "aclnnNsaCompressGradGetWorkspaceSize":
        ("opapi", ctypes.c_int, [_p, _p, _p, _p, _i64, _i64, _i64, ctypes.c_char_p, _p, _p, _u64p, _pp]),
}
_PHASE2 = ["aclnnScaledMaskedSoftmax", "aclnnScaledMaskedSoftmaxBackward", "aclnnGridSampler2D",
           "aclnnGridSampler2DBackward", "aclnnMultiScaleDeformableAttnFunction",
           "aclnnMultiScaleDeformableAttentionGrad", "aclnnNsaCompress", "aclnnNsaCompressGrad"]
for _name in _PHASE2:
    _SIGNATURES[_name] = ("opapi", ctypes.c_int, [_p, _u64, _p, _p])


class _Api:
    """The loaded functions (attributes named as in C), the process's stream, and the call sequence."""

    def __init__(self):
        # The package passes host memory (CPU tensors, NumPy arrays): it needs the CPU device. Unset, ACLNN_DEVICE
        # means "auto", which on a machine with an NVIDIA GPU and a CUDA build gives the GPUs alone, and every call
        # would be refused (host memory is not device memory). A value the program set is left alone.
        os.environ.setdefault("ACLNN_DEVICE", "cpu")
        libraries = {name: _load(name) for name in ("ascendcl", "nnopbase", "opapi")}
        for name, (library, restype, argtypes) in _SIGNATURES.items():
            function = getattr(libraries[library], name)
            function.restype = restype
            function.argtypes = argtypes
            setattr(self, name, function)
        self.phase1 = {op: getattr(self, op + "GetWorkspaceSize") for op in _PHASE2}
        self.phase2 = {op: getattr(self, op) for op in _PHASE2}
        self.check("aclInit", self.aclInit(None), accept=(100002,))  # 100002: initialised already
        self.check("aclrtSetDevice", self.aclrtSetDevice(0))
        stream = ctypes.c_void_p()
        self.check("aclrtCreateStream", self.aclrtCreateStream(ctypes.byref(stream)))
        self.stream = stream

    def recent_error(self):
        message = self.aclGetRecentErrMsg()
        return message.decode("utf-8", "replace") if message else ""

    def check(self, function, status, accept=()):
        if status != ACL_SUCCESS and status not in accept:
            raise AclnnError(function, status, self.recent_error())

    def run(self, op, *phase1_args):
        """CANN's sequence for one call: phase 1, a workspace from aclrtMalloc, phase 2, synchronise, free."""
        workspace_size = ctypes.c_uint64(0)
        executor = ctypes.c_void_p()
        status = self.phase1[op](*phase1_args, ctypes.byref(workspace_size), ctypes.byref(executor))
        if status != ACL_SUCCESS:
            raise AclnnError(op + "GetWorkspaceSize", status, self.recent_error())
        workspace = ctypes.c_void_p()
        if workspace_size.value > 0:
            status = self.aclrtMalloc(ctypes.byref(workspace), workspace_size.value, ACL_MEM_MALLOC_HUGE_FIRST)
            if status != ACL_SUCCESS:
                message = self.recent_error()
                self.aclDestroyAclOpExecutor(executor)
                raise AclnnError("aclrtMalloc", status, message)
        try:
            self.check(op, self.phase2[op](workspace, workspace_size.value, executor, self.stream))
            self.check("aclrtSynchronizeStream", self.aclrtSynchronizeStream(self.stream))
        finally:
            if workspace.value:
                self.aclrtFree(workspace)


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
