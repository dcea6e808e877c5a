"""The registry records, one module per kernel. Importing this package registers them all."""

from properties.infos import top_k_top_p  # noqa: F401
