"""The lowest layer: values with no torch in them. Vocabularies, RunSpec and Result, the raw
samples and their statistics, typed views of the metrics, peak figures, the version."""
