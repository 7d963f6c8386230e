"""The machines jobs run on, as data.

==================  ==============================================================================
``accelerators``    the accelerator table (``accelerators.csv``, each row with its public source):
                    peak FLOP/s per precision, memory, scale-up domain and network links
``capability``      what decides a machine's speed (CPU instruction set, GPU clocks and power
                    limit), named from a record's hardware, and whether two records' machines compare
==================  ==============================================================================
"""
