"""jaxlite.ad_checkpoint: rematerialization (checkpointing), as jax.ad_checkpoint."""
from jaxlite.transforms.checkpoint import (Offloadable, Recompute, Saveable, checkpoint, checkpoint_name,
                                           checkpoint_policies, print_saved_residuals, remat)

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name", "checkpoint_policies",
           "print_saved_residuals", "remat"]
