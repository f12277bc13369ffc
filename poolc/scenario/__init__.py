"""`poolc test`: scenarios rolled forward and their expectations judged (docs/scenarios.md)."""
