"""View models and pure formatters between the analysis and the renderers."""
