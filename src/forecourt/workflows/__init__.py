"""Workflow definitions shipped with Forecourt (BPMN 2.0 files, loaded as package data)."""
