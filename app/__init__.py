"""The desktop viewer and the command line. GUI packages are imported only by the viewer."""
