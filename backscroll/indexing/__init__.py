"""The indexing core: find transcripts, plan reads (stat only), read them through the
readers (in worker processes for big passes), clean what they give (redaction,
exclusions) and hand it to the store's writer. Used by the daemon and, without a
daemon, by ``backscroll index``; it imports neither watchdog nor APScheduler."""
