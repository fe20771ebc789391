"""Export a workload's model for other runtimes: ONNX (validated with ONNX Runtime) and Core ML
(for the Apple Neural Engine; converted and checked here, predicted only on macOS)."""

from .common import ExportReport, export_model, library_output

__all__ = ["ExportReport", "export_model", "library_output"]
