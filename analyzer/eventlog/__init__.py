"""Reading Spark event logs: finding them, decompressing them, splitting lines, decoding events."""
