"""A run of streamlearn: its arrays (``runstate``), the source of each pass, the early stop and the
flows of training and prediction (``session``; scd's batch flow ``scd_run``), the entry points the CLI
calls (``driver``), the parsing pipeline (``stream``), models in and out (``model_io``), and what a run
reports: the progress table and summary (``report``), the progress history (``history``), ``--trace``
(``trace``), ``--objective`` (``objective``); ``warmup`` compiles every kernel."""
