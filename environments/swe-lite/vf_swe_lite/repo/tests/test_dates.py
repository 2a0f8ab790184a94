import unittest

from minilib.dates import day_of_year, days_in_month, is_leap_year


class LeapYearTest(unittest.TestCase):
    def test_rules(self):
        self.assertTrue(is_leap_year(2024))
        self.assertFalse(is_leap_year(2023))
        self.assertFalse(is_leap_year(1900))
        self.assertTrue(is_leap_year(2000))


class DaysInMonthTest(unittest.TestCase):
    def test_february(self):
        self.assertEqual(days_in_month(2024, 2), 29)
        self.assertEqual(days_in_month(2023, 2), 28)

    def test_other_months(self):
        self.assertEqual(
            [days_in_month(2023, m) for m in range(1, 13)],
            [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31],
        )

    def test_bad_month(self):
        for month in (0, 13):
            with self.assertRaises(ValueError):
                days_in_month(2023, month)


class DayOfYearTest(unittest.TestCase):
    def test_first_and_last(self):
        self.assertEqual(day_of_year(2023, 1, 1), 1)
        self.assertEqual(day_of_year(2023, 12, 31), 365)
        self.assertEqual(day_of_year(2024, 12, 31), 366)

    def test_march_first(self):
        self.assertEqual(day_of_year(2024, 3, 1), 61)

    def test_bad_day(self):
        with self.assertRaises(ValueError):
            day_of_year(2023, 2, 29)
        with self.assertRaises(ValueError):
            day_of_year(2023, 1, 0)

    def test_last_day_of_month_is_valid(self):
        self.assertEqual(day_of_year(2023, 4, 30), 120)


if __name__ == "__main__":
    unittest.main()
