"""The warm GPU service: one process per user and GPU set that holds the evaluator workers (and
with them the CUDA context and the original's kept runs) for the editor and every `fsr` command.
`warm_service.py` answers requests on a Unix socket; the client is `backends/service_client.py`."""
