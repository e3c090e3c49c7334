"""Dory in PyTorch: the model of ../../shared/spec/DORY.md, its step-wise decoding (the
float64 oracle), and the pieces the trainer and exporter share."""

from .config import O1, Config, ConfigError, Exit
from .model import Dory
from .session import Session
from .weights import WeightsError, load, save

__all__ = ["Config", "ConfigError", "Dory", "Exit", "O1", "Session", "WeightsError", "load", "save"]
