"""Analyses built on the scoring engine: alignments, similarity matrices and heatmaps, system
comparisons, all pairs, MBR, paired statistics and corpus summaries."""
