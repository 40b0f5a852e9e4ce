"""The Streamlit shell: widgets, panels and page sections. Everything it shows is computed by the pure
view layer (`wmviz.view`); only this package (and app.py) imports Streamlit."""
