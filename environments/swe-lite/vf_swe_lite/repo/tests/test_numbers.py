import unittest

from minilib.numbers import clamp, is_prime, mean, median, percent_change


class ClampTest(unittest.TestCase):
    def test_inside(self):
        self.assertEqual(clamp(5, 1, 10), 5)

    def test_below_and_above(self):
        self.assertEqual(clamp(-3, 0, 10), 0)
        self.assertEqual(clamp(11, 0, 10), 10)

    def test_edges(self):
        self.assertEqual(clamp(0, 0, 10), 0)
        self.assertEqual(clamp(10, 0, 10), 10)

    def test_bad_range(self):
        with self.assertRaises(ValueError):
            clamp(1, 5, 2)

    def test_single_point_range(self):
        self.assertEqual(clamp(7, 3, 3), 3)


class MeanMedianTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_mean_single(self):
        self.assertEqual(mean([7]), 7)

    def test_mean_empty(self):
        with self.assertRaises(ValueError):
            mean([])

    def test_median_odd(self):
        self.assertEqual(median([5, 1, 3]), 3)

    def test_median_even(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)

    def test_median_empty(self):
        with self.assertRaises(ValueError):
            median([])


class PrimeTest(unittest.TestCase):
    def test_small_primes(self):
        self.assertEqual([n for n in range(20) if is_prime(n)], [2, 3, 5, 7, 11, 13, 17, 19])

    def test_squares_of_primes(self):
        self.assertFalse(is_prime(49))
        self.assertFalse(is_prime(121))
        self.assertFalse(is_prime(4))

    def test_large_prime(self):
        self.assertTrue(is_prime(7919))


class PercentChangeTest(unittest.TestCase):
    def test_increase(self):
        self.assertEqual(percent_change(50, 75), 50.0)

    def test_decrease(self):
        self.assertEqual(percent_change(200, 150), -25.0)

    def test_negative_base(self):
        self.assertEqual(percent_change(-10, -5), 50.0)

    def test_rounding(self):
        self.assertEqual(percent_change(3, 4), 33.33)

    def test_from_zero(self):
        with self.assertRaises(ZeroDivisionError):
            percent_change(0, 5)


if __name__ == "__main__":
    unittest.main()
