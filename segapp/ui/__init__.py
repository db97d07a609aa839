"""Qt widgets of segapp: canvas and tools, panels, energy plot, main window."""
