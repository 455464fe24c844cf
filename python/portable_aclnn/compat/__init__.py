"""Drop-in modules with the names and signatures of the libraries people already call these operators through:
torch_npu, mx_driving and mmcv. Existing code changes one import."""
