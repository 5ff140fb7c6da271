"""albert_mini: ALBERT (Lan et al., ICLR 2020) built to be read, run and pretrained on a laptop CPU."""

from .config import PRESETS, AlbertConfig, ConfigError
from .counting import count_parameters
from .model import AlbertForPreTraining, AlbertModel

__version__ = "0.1.0"

__all__ = [
    "AlbertConfig", "ConfigError", "PRESETS", "AlbertModel", "AlbertForPreTraining", "count_parameters",
    "__version__",
]
