"""The optional ``[dispatch]`` of a scenario, and ``bundlewise throttle``: consumers draining backlogs through the
dispatch limiters (docs/simulator.md, ``[dispatch]``; docs/throttling.md).

* ``topics``: the topics' description and its one reader (``throttle`` input, a scenario's ``[dispatch].topics``);
* ``spec``: the ``[dispatch]`` section of a scenario;
* ``dispatcher``: one broker's dispatchers over time (``DispatchSimulation``);
* ``cluster``: the cluster's dispatch in the simulator, one ``DispatchSimulation`` per broker, tick by tick.
"""
