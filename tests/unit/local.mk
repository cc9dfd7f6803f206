# unit
