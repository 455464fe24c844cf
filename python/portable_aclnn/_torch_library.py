"""The operators registered with PyTorch's dispatcher as torch.ops.portable_aclnn.*, so that torch.compile, FX and
TorchScript see them as single operators (docs/python.md, "torch.library").

Each operator module's entries (portable_aclnn/ops/, _operator.Entry) give a schema, the CPU and CUDA kernel (the
plain function, which takes both), a fake kernel that only makes outputs of the right shape (for meta tensors and
torch.compile's FakeTensors), and for forward operators autograd: on PyTorch >= 2.4 through
torch.library.register_autograd, whose backward calls the registered backward operator (so AOTAutograd traces it);
before 2.4 (Debian's 1.13 included) through Python kernels for the AutogradCPU, AutogradCUDA and AutogradMeta keys
(the modules' autograd Functions; shapes only on meta tensors).

Imported by the package when PyTorch is installed; registration happens once per process.
"""

import torch

from .ops import entries

NAMESPACE = "portable_aclnn"

_library = None


def register():
    """Defines the operators (once per process; later calls, or a namespace taken already, do nothing)."""
    global _library
    if _library is not None:
        return
    table = entries()
    try:
        library = torch.library.Library(NAMESPACE, "DEF")
        for name, entry in table.items():
            library.define(name + entry.schema)
    except RuntimeError:  # defined already in this process (another copy of the package): use those
        return
    modern = hasattr(torch.library, "register_autograd") and hasattr(torch.library, "register_fake")
    for name, entry in table.items():
        # The package's functions take CPU and CUDA tensors alike (a CUDA call runs on PyTorch's current stream).
        kernel = entry.kernel or entry.function
        library.impl(name, kernel, "CPU")
        library.impl(name, kernel, "CUDA")
        qualified = f"{NAMESPACE}::{name}"
        if modern:
            torch.library.register_fake(qualified, entry.fake, lib=library)
            if entry.autograd is not None:
                setup_context, backward = entry.autograd
                torch.library.register_autograd(qualified, backward, setup_context=setup_context, lib=library)
        else:
            library.impl(name, entry.fake, "Meta")
            library.impl(name, entry.fake, "AutogradMeta")
            # Forward operators: their autograd Function. Backward operators have no derivative of their own (as in
            # the package's functions): AutogradCPU and AutogradCUDA run them as they are.
            autograd = entry.legacy_autograd if entry.legacy_autograd is not None else kernel
            library.impl(name, autograd, "AutogradCPU")
            library.impl(name, autograd, "AutogradCUDA")
    _library = library
