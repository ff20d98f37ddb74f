"""Type stubs of the nnac extension module (a thin pyo3 layer over nnac-driver)."""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

__version__: str

PathLike = Union[str, "os.PathLike[str]"]
Array = npt.NDArray[Any]
CalibItem = Union[Array, PathLike]
Calib = Union[CalibItem, Sequence[CalibItem], Mapping[str, Union[CalibItem, Sequence[CalibItem]]]]

class UserError(Exception):
    """Bad input (the CLI's exit code 1): the message is the CLI's."""

class InternalError(Exception):
    """A bug in nnac (the CLI's exit code 2)."""

class TensorInfo:
    """One input or output of a program (like ONNX Runtime's NodeArg)."""

    name: str
    shape: List[int]
    dtype: str
    """The code type on the NNA: "int8" or "uint8"."""
    type: str
    """"tensor(float)": the float interface of run()."""
    scale: float
    zero_point: int

class Program:
    """A compiled NNA program (.nnab)."""

    @staticmethod
    def load(path: PathLike) -> "Program": ...
    @staticmethod
    def from_bytes(data: bytes) -> "Program": ...
    def save(self, path: PathLike) -> None: ...
    def to_bytes(self) -> bytes: ...
    @property
    def inputs(self) -> List[TensorInfo]: ...
    @property
    def outputs(self) -> List[TensorInfo]: ...
    @property
    def source_model(self) -> str: ...
    @property
    def quant_report(self) -> Optional[Dict[str, Any]]: ...
    def disasm(self) -> str: ...
    def verify(self) -> str: ...

class InferenceSession:
    """Runs a program on the bit-exact simulator, shaped like onnxruntime.InferenceSession."""

    def __init__(
        self,
        program_or_path: Union[Program, PathLike],
        hw: Optional[PathLike] = None,
        *,
        schedule: str = "eager",
        seed: int = 0,
    ) -> None: ...
    def get_inputs(self) -> List[TensorInfo]: ...
    def get_outputs(self) -> List[TensorInfo]: ...
    def run(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Union[Mapping[str, Array], Array],
        *,
        raw: bool = False,
    ) -> List[Array]: ...

def compile(
    model: PathLike,
    *,
    weights: Optional[PathLike] = None,
    calib: Optional[Calib] = None,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
    hw: Optional[PathLike] = None,
    calib_method: str = "mse",
    percentile: float = 99.99,
    bias_correction: str = "depthwise",
    weight_rounding: str = "nearest",
    requant: str = "fixed",
    resident_weights: str = "auto",
    verify_each: bool = False,
    mean: Optional[Sequence[float]] = None,
    scale: float = 1.0,
    bgr: bool = False,
    resize: Optional[str] = None,
    dump_ir: Optional[str] = None,
    dump_dir: Optional[PathLike] = None,
    quant_report: bool = False,
    host_ops: str = "allow",
    float_layers: Optional[Sequence[str]] = None,
    auto_float: Optional[int] = None,
    channels_on_rows: Optional[Sequence[str]] = None,
) -> Program: ...
def profile(
    program: Union[Program, PathLike],
    hw: Optional[PathLike] = None,
    *,
    assume_packet_rule: bool = False,
) -> Dict[str, Any]: ...
def inspect(
    model: PathLike,
    *,
    weights: Optional[PathLike] = None,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
    full: bool = False,
    format: str = "text",
) -> str: ...
def eval_float(
    model: PathLike,
    feeds: Union[Mapping[str, Array], Array],
    *,
    weights: Optional[PathLike] = None,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
) -> Dict[str, npt.NDArray[np.float32]]: ...
def eval_quantized(
    model: PathLike,
    feeds: Union[Mapping[str, Array], Array],
    *,
    calib: Calib,
    weights: Optional[PathLike] = None,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
    calib_method: str = "mse",
    percentile: float = 99.99,
    bias_correction: str = "depthwise",
    weight_rounding: str = "nearest",
    requant: str = "fixed",
    mean: Optional[Sequence[float]] = None,
    scale: float = 1.0,
    bgr: bool = False,
    resize: Optional[str] = None,
    float_layers: Optional[Sequence[str]] = None,
    auto_float: Optional[int] = None,
) -> Dict[str, npt.NDArray[np.float32]]: ...
def analyze(
    model: PathLike,
    inputs: Optional[Calib] = None,
    *,
    calib: Optional[Calib] = None,
    weights: Optional[PathLike] = None,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
    hw: Optional[PathLike] = None,
    calib_method: str = "mse",
    percentile: float = 99.99,
    bias_correction: str = "depthwise",
    weight_rounding: str = "nearest",
    requant: str = "fixed",
    float_layers: Optional[Sequence[str]] = None,
    auto_float: Optional[int] = None,
    mean: Optional[Sequence[float]] = None,
    scale: float = 1.0,
    bgr: bool = False,
    resize: Optional[str] = None,
) -> Dict[str, Any]:
    """Which layer lost the accuracy (`nnac analyze --json`): per layer the int8
    error accumulated from the input (`entire`) and of the layer alone on float
    inputs (`single`), as cosine, SQNR and largest error, and the sensitivity
    `ranking` (layers to keep in float with `float_layers` / `auto_float`)."""
def evaluate(
    program: Union[Program, PathLike],
    frames: Union[Mapping[str, Array], Array],
    *,
    hw: Optional[PathLike] = None,
    raw: bool = False,
    progress: bool = True,
) -> Dict[str, Array]: ...
