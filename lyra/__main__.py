from lyra.cli import app

app()
