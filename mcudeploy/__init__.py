"""mcudeploy: neural networks on microcontrollers with the least SRAM."""

__version__ = "0.1.0"
