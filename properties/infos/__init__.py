"""The registry records, one module per kernel. Importing this package registers them all."""

from properties.infos import top_k_top_p  # noqa: F401
from properties.infos import temperature  # noqa: F401
from properties.infos import min_p  # noqa: F401
