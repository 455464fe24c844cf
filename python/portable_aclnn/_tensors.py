"""aclTensor views of PyTorch tensors and NumPy arrays, without copies.

A view passes the array's own data pointer, shape and element strides to aclCreateTensor, with a storage that
just covers the view; so transposed, sliced and broadcast (zero-stride) inputs are read in place.
"""

import ctypes
import math
import weakref

import numpy as np

from ._library import api

try:
    import torch
except ImportError:  # the NumPy interface works without PyTorch
    torch = None

ACL_FLOAT, ACL_FLOAT16, ACL_INT32, ACL_INT64, ACL_DOUBLE, ACL_BOOL, ACL_BF16 = 0, 1, 3, 9, 11, 12, 27
ACL_FORMAT_ND = 2

_NUMPY_DTYPES = {np.dtype(np.float32): ACL_FLOAT, np.dtype(np.float16): ACL_FLOAT16, np.dtype(np.float64): ACL_DOUBLE,
                 np.dtype(np.bool_): ACL_BOOL, np.dtype(np.int32): ACL_INT32, np.dtype(np.int64): ACL_INT64}
_TORCH_DTYPES = {}
if torch is not None:
    _TORCH_DTYPES = {torch.float32: ACL_FLOAT, torch.float16: ACL_FLOAT16, torch.float64: ACL_DOUBLE,
                     torch.bool: ACL_BOOL, torch.int32: ACL_INT32, torch.int64: ACL_INT64, torch.bfloat16: ACL_BF16}


_TENSOR_TYPE = torch.Tensor if torch is not None else ()  # isinstance(x, ()) is False
_NDARRAY = np.ndarray


def is_torch(array):
    return isinstance(array, _TENSOR_TYPE)


def require_array(array, name):
    """TypeError unless array is a torch.Tensor or numpy.ndarray (checked before its shape is read)."""
    if not isinstance(array, (_TENSOR_TYPE, _NDARRAY)):
        raise TypeError(f"{name}: expected a torch.Tensor or numpy.ndarray, got {type(array).__name__}")


def _unsupported_device(array, name):
    return ValueError(f"{name}: tensors on {array.device} are not supported: portable_aclnn runs on the CPU and on "
                      "CUDA GPUs")


def cuda_index(array, name):
    """None for host memory (NumPy, CPU tensors), the device index of a CUDA tensor; ValueError for other devices."""
    if not isinstance(array, _TENSOR_TYPE) or array.is_cpu:
        return None
    if array.is_cuda:
        return array.get_device()
    raise _unsupported_device(array, name)


def describe(array, name):
    """(data pointer, shape, element strides, acl dtype, CUDA device index or None for host memory) of a torch
    tensor or NumPy array. One pass over the array: this is most of a small call's Python cost."""
    if isinstance(array, _TENSOR_TYPE):
        dtype = _TORCH_DTYPES.get(array.dtype)
        if dtype is None:
            raise TypeError(f"{name}: dtype {array.dtype} is not supported")
        if array.is_cpu:
            index = None
        elif array.is_cuda:
            index = array.get_device()
        else:
            raise _unsupported_device(array, name)
        return array.data_ptr(), array.shape, array.stride(), dtype, index  # shape: torch.Size, a tuple
    if isinstance(array, _NDARRAY):
        dtype = _NUMPY_DTYPES.get(array.dtype)
        if dtype is None:
            raise TypeError(f"{name}: dtype {array.dtype} is not supported")
        key = (array.strides, array.itemsize)
        strides = _ELEMENT_STRIDES.get(key)
        if strides is None:
            strides = _element_strides(key, name)
        return array.ctypes.data, array.shape, strides, dtype, None
    raise TypeError(f"{name}: expected a torch.Tensor or numpy.ndarray, got {type(array).__name__}")


# (byte strides, item size) -> element strides of NumPy arrays (bounded as _VIEW_CACHE).
_ELEMENT_STRIDES = {}


def _element_strides(key, name):
    byte_strides, itemsize = key
    if any(s % itemsize for s in byte_strides):
        raise ValueError(f"{name}: strides {byte_strides} are not whole elements")
    if len(_ELEMENT_STRIDES) >= 4096:
        _ELEMENT_STRIDES.clear()
    strides = _ELEMENT_STRIDES[key] = tuple(s // itemsize for s in byte_strides)
    return strides


# ctypes array types of int64 by length (a length-0 view still passes a valid pointer).
_INT64_ARRAYS = [ctypes.c_int64 * max(n, 1) for n in range(9)]

# (shape, strides) -> the ctypes arguments aclCreateTensor takes for that view: (rank, dims, strides, storage dims).
# aclCreateTensor copies the arrays, so one set serves every call with the same view; a small call's Python cost is
# mostly building them (issue 16's per-call overhead goal). Bounded: cleared when it grows past _VIEW_CACHE_LIMIT.
_VIEW_CACHE = {}
_VIEW_CACHE_LIMIT = 4096


def _view_arguments(shape, strides, name):
    key = (shape, strides)
    arguments = _VIEW_CACHE.get(key)
    if arguments is not None:
        return arguments
    count = len(shape)
    if count >= len(_INT64_ARRAYS):
        raise ValueError(f"{name}: rank {count} is above 8, the most aclCreateTensor takes")
    # The storage just covers the view: 1 + sum((d - 1) * stride) elements (0 for an empty view).
    extent = 1
    for size, stride in zip(shape, strides):
        if size == 0:
            extent = 0
            break
        if stride < 0:
            raise ValueError(f"{name}: negative strides {strides} are not supported (aclCreateTensor refuses them)")
        extent += (size - 1) * stride
    array_type = _INT64_ARRAYS[count]
    arguments = (ctypes.c_uint64(count), array_type(*shape), array_type(*strides), _INT64_ARRAYS[1](extent))
    if len(_VIEW_CACHE) >= _VIEW_CACHE_LIMIT:
        _VIEW_CACHE.clear()
    _VIEW_CACHE[tuple(shape), tuple(strides)] = arguments
    return arguments


_ZERO_OFFSET = ctypes.c_int64(0)
_ONE_STORAGE_DIM = ctypes.c_uint64(1)
_FORMAT_ND = ctypes.c_int(ACL_FORMAT_ND)
_c_void_p = ctypes.c_void_p


def _create(data, shape, strides, dtype, name):
    """aclCreateTensor(viewDims, viewDimsNum, dataType, stride, offset, format, storageDims, storageDimsNum, data),
    called without argtypes (_library.py): each argument is passed as its C type here, the int64 arrays, the uint64
    and int64 scalars as ctypes objects (a plain int would pass as a 32-bit int), dtype as an int (aclDataType is an
    enum, an int)."""
    count, dims, steps, storage = _VIEW_CACHE.get((shape, strides)) or _view_arguments(shape, strides, name)
    handle = api().aclCreateTensor(dims, count, dtype, steps, _ZERO_OFFSET, _FORMAT_ND, storage, _ONE_STORAGE_DIM,
                                   _c_void_p(data))
    if handle.value is None:
        raise ValueError(f"{name}: aclCreateTensor refused shape {tuple(shape)} strides {tuple(strides)}: "
                         f"{api().recent_error()}")
    return handle


def create_tensor(array, name):
    """A new aclTensor handle over an array's memory (the caller destroys it, and keeps the array alive till then)."""
    data, shape, strides, dtype, _ = describe(array, name)
    return _create(data, shape, strides, dtype, name)


def _where(index):
    return "host memory" if index is None else f"cuda:{index}"


class Operands:
    """The aclTensor views of one call's arrays, destroyed together when the `with` block ends. The caller keeps the
    arrays alive for the block (they are its arguments and results). All of a call's arrays are host memory (run on
    the CPU device) or on one CUDA device (`cuda_index`, run there): checked as they are added."""

    __slots__ = ("_handles", "cuda_index", "_first_name")

    def __init__(self):
        self._handles = []
        self.cuda_index = None
        self._first_name = None  # the operand whose device the call's is

    def tensor(self, array, name):
        data, shape, strides, dtype, index = describe(array, name)
        if self._first_name is None:
            self._first_name = name
            self.cuda_index = index
        elif index != self.cuda_index:
            raise ValueError(f"{name} is in {_where(index)}, but {self._first_name} is in {_where(self.cuda_index)}: "
                             "a call's tensors must all be on one device")
        handle = _create(data, shape, strides, dtype, name)
        self._handles.append(handle)
        return handle

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        if self._handles:
            destroy = api().aclDestroyTensor
            for handle in self._handles:
                destroy(handle)
            self._handles.clear()


class AclTensor:
    """An aclTensor over an array's memory; destroyed with the object (use as a context or keep it alive)."""

    handle = None

    def __init__(self, array, name):
        self.array = array  # keeps the memory alive as long as the aclTensor
        self.handle = create_tensor(array, name)

    def close(self):
        if self.handle is not None:
            api().aclDestroyTensor(self.handle)
            self.handle = None

    def __del__(self):
        self.close()


class _HostArray:
    """An aclBoolArray / aclIntArray of values (host memory, copied by the create call)."""

    def __init__(self, values, element_type, create, destroy):
        items = (element_type * max(len(values), 1))(*values)
        self._destroy = destroy
        self.handle = create(items, len(values))

    def __del__(self):
        if self.handle:
            self._destroy(self.handle)


def bool_array(values):
    return _HostArray(values, ctypes.c_bool, api().aclCreateBoolArray, api().aclDestroyBoolArray)


def int_list(values):
    """A list of ints from a list, tuple, NumPy array or tensor (torch_npu's actual-length arguments)."""
    if is_torch(values) or isinstance(values, np.ndarray):
        values = values.tolist()
    return [int(v) for v in values]


def sequence_ends(tokens, actual_seq_len):
    """torch_npu's actual_seq_len arguments (a list, tuple, NumPy array or tensor): cumulative sequence ends as a list
    of ints; None: one sequence of all `tokens` tokens."""
    if actual_seq_len is None:
        return [int(tokens)]
    return int_list(actual_seq_len)


def int_array(values):
    return _HostArray(values, ctypes.c_int64, api().aclCreateIntArray, api().aclDestroyIntArray)


# Outputs in host memory of at least this many bytes come from the CPU device's aclrtMalloc (see _pooled_host_tensor).
POOLED_OUTPUT_BYTES = 1 << 20


def _pooled_host_tensor(shape, dtype, count, nbytes):
    """An uninitialised CPU tensor over memory from the CPU device's aclrtMalloc, given back with aclrtFree when the
    tensor's storage dies. aclrtMalloc keeps freed blocks (docs/runtime.md, "Memory"), so a training loop's outputs
    and gradients of the same sizes reuse pages already mapped: PyTorch's CPU allocator returns blocks of 32 MiB and
    more to the system on free (glibc), and each step would map them afresh, a page fault per 4 KiB."""
    block = api().host_malloc(nbytes)
    buffer = (ctypes.c_uint8 * nbytes).from_address(block)
    # torch.frombuffer keeps `buffer` alive as long as the tensor's storage; when both are gone, the block goes back.
    weakref.finalize(buffer, api().host_free, block).atexit = False
    return torch.frombuffer(buffer, dtype=dtype, count=count).view(shape)


def empty_of_dtype(reference, shape, dtype):
    """A new array of reference's kind and device with dtype "float32" or "int32" (the same name in torch and
    NumPy)."""
    if isinstance(reference, _TENSOR_TYPE):
        return reference.new_empty(shape, dtype=getattr(torch, dtype))
    return np.empty(shape, dtype=dtype)


def empty_like_kind(reference, shape):
    """A new uninitialised array of shape, of reference's kind (torch or NumPy), dtype and device (contiguous)."""
    if isinstance(reference, _TENSOR_TYPE):
        if reference.is_cpu:
            count = math.prod(shape)
            nbytes = count * reference.element_size()
            if nbytes >= POOLED_OUTPUT_BYTES:
                return _pooled_host_tensor(shape, reference.dtype, count, nbytes)
        return reference.new_empty(shape)
    return np.empty(shape, dtype=reference.dtype)
