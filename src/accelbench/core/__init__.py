"""The lowest layer: values with no torch in them. Vocabularies, RunSpec and Result, the raw
samples and their statistics, the facts' registry and codec, peak figures, the version."""
