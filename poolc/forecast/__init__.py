"""When will each waiting step start, and what does the platform cost: the plan
rolled forward in time (docs/forecast.md).

``durations`` (how long each step runs), ``rollforward`` (the event loop, pure),
``strategies`` (the plan's own strategy as the loop's planner), ``costs`` (prices),
``summary`` (the Forecast value and its JSON), ``render`` (text and markdown),
``compare`` (two forecasts side by side) and ``make`` (all of it from a plan).
"""
