"""Live mode's lifecycle, below the page: a browser session's live run (its query, the clicks
waiting for their micro-batch, the timeline the page reads), starting and stopping one, the folders
the queries keep their files in and the sweep of those a stopped server left. No Streamlit: the
page (`wmviz.ui.live_view`) draws what these hold and hands them the clicks."""
