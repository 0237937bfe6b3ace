from backscroll.cli import entry

entry()
