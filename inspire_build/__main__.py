from inspire_build.cli import main

main()
