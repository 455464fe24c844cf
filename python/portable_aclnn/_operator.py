"""What an operator module declares (portable_aclnn/ops/<folder>.py, one per C operator folder src/ops/<folder>/).

An operator module is plain Python that defines, at module level:

    ACLNN    a tuple of AclnnCall: its aclnn functions (phase 1's argument types, as the C header declares them)
    ENTRIES  a tuple of Entry: one per function of the package (its forward, its backward), each with its public
             function, its plain function, its torch.library entries and its command-line description

and the code those refer to: the plain functions (torch tensors or NumPy arrays in, new arrays out, no autograd),
the torch.autograd.Function (defined only when PyTorch is installed), the public functions, the fake kernels and the
autograd hooks. The shared modules read nothing else: _library.py takes ACLNN for the ctypes signatures, __init__.py
takes each entry's `public` function under its `name`, _torch_library.py registers each entry with PyTorch's
dispatcher, __main__.py lists each entry as a command-line operator. portable_aclnn.ops finds the modules.
"""

import ctypes
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

from ._tensors import torch

# Phase 1's argument types, by what the C header declares (the workspace size and executor pointers that end every
# aclnnXxxGetWorkspaceSize are added by _library.py).
TENSOR = ctypes.c_void_p      # const aclTensor *, aclTensor *
INT_ARRAY = ctypes.c_void_p   # const aclIntArray *
BOOL_ARRAY = ctypes.c_void_p  # const aclBoolArray *
STRING = ctypes.c_char_p      # char *
DOUBLE = ctypes.c_double
BOOL = ctypes.c_bool
INT64 = ctypes.c_int64


class _Required:
    """The default of an attribute that must be given (the command line refuses a call without it)."""

    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()


@dataclass(frozen=True)
class AclnnCall:
    """One aclnn operator of the C library: `name` is its phase 2 (aclnnXxx), name + "GetWorkspaceSize" its phase 1,
    whose arguments before (uint64_t *workspaceSize, aclOpExecutor **executor) have the types `phase1_argtypes`."""

    name: str
    phase1_argtypes: Tuple


@dataclass(frozen=True, eq=False)
class Entry:
    """One function of the package, under one name everywhere: portable_aclnn.<name>, torch.ops.portable_aclnn.<name>
    and `python3 -m portable_aclnn run <name>`.

    public           portable_aclnn.<name>: the documented function (autograd where the operator has it)
    function         the plain function (no autograd): the command line's, and the dispatcher's CPU and CUDA kernel
                     unless `kernel` is given
    schema           its torch.library schema after the name, "(Tensor x, ...) -> Tensor"
    fake             the shape-only kernel (meta tensors, torch.compile's fake tensors)
    inputs           the array arguments, in order (the command line's --input names)
    attributes       the other arguments: name -> default, or REQUIRED (the command line's --attr names)
    outputs          the names of its results, in order (the command line's output files)
    kernel           the dispatcher's CPU and CUDA kernel, where it differs from `function` (its outputs must be
                     tensors)
    autograd         PyTorch >= 2.4: (setup_context, backward) for torch.library.register_autograd; None: the
                     operator has no derivative of its own (a backward)
    legacy_autograd  PyTorch < 2.4: the AutogradCPU/AutogradCUDA kernel (the module's torch.autograd.Function), with
                     the schema's defaults (a Python kernel gets only the arguments its caller gave)
    """

    name: str
    public: Callable
    function: Callable
    schema: str
    fake: Callable
    inputs: Tuple[str, ...]
    attributes: dict
    outputs: Tuple[str, ...]
    kernel: Optional[Callable] = None
    autograd: Optional[Tuple[Callable, Callable]] = None
    legacy_autograd: Optional[Callable] = None


def needs_autograd(*arrays):
    """Whether a call must be recorded for autograd: some torch input requires grad and grad mode is on. Other
    calls skip torch.autograd.Function (its bookkeeping costs more than the operator on small tensors)."""
    for array in arrays:
        if isinstance(array, _TENSOR_TYPE) and array.requires_grad:
            return torch.is_grad_enabled()
    return False


_TENSOR_TYPE = torch.Tensor if torch is not None else ()  # isinstance(x, ()) is False
