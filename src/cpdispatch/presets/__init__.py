"""System presets shipped with cpdispatch (TOML files in this folder)."""
