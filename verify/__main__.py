from verify.cli import run_console

run_console()
