"""What a job found, as typed data every layer above may read: the Pareto front, the report tree and its checks,
its Markdown, its `report.json`, and the summary-instruction job's report.

The search builds these and tracking logs them; neither reaches into the other for them (tracking reads the
search's events alone, `optimizer.search.events`).
"""
