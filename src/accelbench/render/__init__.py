"""Reports: a self-contained HTML page with charts, a Markdown table, a single chart as PNG."""

from .charts import throughput_chart
from .html import html_report
from .markdown import markdown_report

__all__ = ["html_report", "markdown_report", "throughput_chart"]
