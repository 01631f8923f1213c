"""Tests of the record log, its sink, the recording glue and the report digest."""
