# cuda-standin
