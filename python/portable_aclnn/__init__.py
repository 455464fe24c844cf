"""portable_aclnn: CANN's aclnn operators on the CPU and NVIDIA GPUs, from Python.

Functions take PyTorch tensors (differentiable with autograd: backward runs the backward operator) or NumPy arrays
(no autograd; PyTorch need not be installed), read them in place whatever their strides, and return new tensors or
arrays of the same kind. docs/python.md documents each one.

The functions are the operator modules' (portable_aclnn/ops/<operator>.py, each declaring its ENTRIES): this module
takes every entry's public function under its name.
"""

from ._library import AclnnError
from ._tensors import torch as _torch_module
from .ops import entries as _entries

__version__ = "0.1.0"
__all__ = ["AclnnError"]

for _name, _entry in _entries().items():
    globals()[_name] = _entry.public
    __all__.append(_name)
del _name, _entry

if _torch_module is not None:  # torch.ops.portable_aclnn.* (docs/python.md, "torch.library")
    from . import _torch_library

    _torch_library.register()
