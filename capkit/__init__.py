"""capkit: image-caption evaluation metrics, reproduced, tested and taught."""
__version__ = "0.1.0"
