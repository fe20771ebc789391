"""Renderers, typed values in and text or PNG bytes out: console tables (`render.console`), a
Markdown table, a self-contained HTML page and its charts. Printing happens in the CLI."""

from .charts import throughput_chart
from .html import html_report
from .markdown import markdown_report

__all__ = ["html_report", "markdown_report", "throughput_chart"]
