"""The local web viewer (``backscroll ui``), served by the daemon on 127.0.0.1."""
