"""The app's pure view layer: view models, tables, Plotly figure dicts and labels. No Streamlit:
a test checks that nothing here imports it, so the report and the CLI can use every view."""
