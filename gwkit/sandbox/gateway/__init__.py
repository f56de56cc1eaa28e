"""The gateway without HTTP: envelopes in, records out; the clock, the store and the daily jobs."""
