"""The app's pure view layer: tables and Plotly figures, no Streamlit."""
