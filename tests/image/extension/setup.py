"""Builds the test extension the way users do: setup.py + BuildExtension."""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="pudev_test_extension",
    ext_modules=[CUDAExtension("pudev_test_extension", ["binding.cpp", "kernel.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
