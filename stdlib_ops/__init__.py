"""The standard operator and procedure catalog (TOML data)."""
