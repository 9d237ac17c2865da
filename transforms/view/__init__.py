"""The dataset viewer: one static, offline HTML page of a dataset folder (data/datasets) or of the export (export/).

folders.py reads the folders into plain rows (I/O); rejects.py groups a folder's rejects by reason and model.py turns
the rows into the page's data (both pure); render.py writes the page (pure: its template, CSS and JS ship beside it
as package data); page.py joins them for the `view` command and the validate and export stages.
"""
