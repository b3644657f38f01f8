"""Learned summary instructions for the summarizers users already run (issue 27).

Layered bottom-up: `defaults` (each target's own default text, read from the installed package),
`call` (one cached summarizer call), `lc_messages`, the target strategies (`langchain_target`,
`anthropic_target`; `ceiling`, LangChain's folding with a summary written from the answer key, the most any
text can give the real agent), `screen` (what a summary kept of what the task needs, before any agent runs),
`lost` (the facts a summary dropped, as optimizer feedback), `contract_text` (the must-keep rules code
appends), `rewrite` (the optimizer LLM's UT and CO steps and their refusals), `search` (the loop).
"""
