"""Config dataclasses (schema), their ConfigStore registration and validation."""
