/** Word pools the synthetic records are drawn from. Cities carry their state, county and place. */

export interface City {
  city: string;
  province: string;
  county: string;
  countyFIPS: string;
  lat: number;
  lon: number;
  zip: number;
  weight: number;
}

const c = (
  city: string,
  province: string,
  county: string,
  countyFIPS: string,
  lat: number,
  lon: number,
  zip: number,
  weight: number,
): City => ({ city, province, county, countyFIPS, lat, lon, zip, weight });

export const CITIES: City[] = [
  c('Austin', 'TX', 'Travis County', '48453', 30.2672, -97.7431, 78701, 6),
  c('Dallas', 'TX', 'Dallas County', '48113', 32.7767, -96.797, 75201, 5),
  c('Houston', 'TX', 'Harris County', '48201', 29.7604, -95.3698, 77002, 6),
  c('San Antonio', 'TX', 'Bexar County', '48029', 29.4241, -98.4936, 78205, 4),
  c('Denver', 'CO', 'Denver County', '08031', 39.7392, -104.9903, 80202, 4),
  c('Boulder', 'CO', 'Boulder County', '08013', 40.015, -105.2705, 80302, 1),
  c('Seattle', 'WA', 'King County', '53033', 47.6062, -122.3321, 98101, 4),
  c('Spokane', 'WA', 'Spokane County', '53063', 47.6588, -117.426, 99201, 1),
  c('Miami', 'FL', 'Miami-Dade County', '12086', 25.7617, -80.1918, 33130, 5),
  c('Orlando', 'FL', 'Orange County', '12095', 28.5383, -81.3792, 32801, 3),
  c('Tampa', 'FL', 'Hillsborough County', '12057', 27.9506, -82.4572, 33602, 3),
  c('Chicago', 'IL', 'Cook County', '17031', 41.8781, -87.6298, 60601, 6),
  c('Phoenix', 'AZ', 'Maricopa County', '04013', 33.4484, -112.074, 85003, 5),
  c('Tucson', 'AZ', 'Pima County', '04019', 32.2226, -110.9747, 85701, 2),
  c('Boston', 'MA', 'Suffolk County', '25025', 42.3601, -71.0589, 2108, 4),
  c('New York', 'NY', 'New York County', '36061', 40.7128, -74.006, 10001, 7),
  c('Buffalo', 'NY', 'Erie County', '36029', 42.8864, -78.8784, 14202, 2),
  c('Los Angeles', 'CA', 'Los Angeles County', '06037', 34.0522, -118.2437, 90012, 7),
  c('San Diego', 'CA', 'San Diego County', '06073', 32.7157, -117.1611, 92101, 4),
  c('San Francisco', 'CA', 'San Francisco County', '06075', 37.7749, -122.4194, 94102, 4),
  c('Sacramento', 'CA', 'Sacramento County', '06067', 38.5816, -121.4944, 95814, 2),
  c('Portland', 'OR', 'Multnomah County', '41051', 45.5152, -122.6784, 97204, 3),
  c('Atlanta', 'GA', 'Fulton County', '13121', 33.749, -84.388, 30303, 4),
  c('Nashville', 'TN', 'Davidson County', '47037', 36.1627, -86.7816, 37201, 3),
  c('Charlotte', 'NC', 'Mecklenburg County', '37119', 35.2271, -80.8431, 28202, 3),
  c('Raleigh', 'NC', 'Wake County', '37183', 35.7796, -78.6382, 27601, 2),
  c('Minneapolis', 'MN', 'Hennepin County', '27053', 44.9778, -93.265, 55401, 3),
  c('Detroit', 'MI', 'Wayne County', '26163', 42.3314, -83.0458, 48226, 3),
  c('Las Vegas', 'NV', 'Clark County', '32003', 36.1699, -115.1398, 89101, 3),
  c('Salt Lake City', 'UT', 'Salt Lake County', '49035', 40.7608, -111.891, 84101, 2),
];

export const STREETS = [
  'Oak', 'Maple', 'Cedar', 'Pine', 'Elm', 'Walnut', 'Willow', 'Lake', 'Hill', 'Park', 'Main', 'Church',
  'Washington', 'Lincoln', 'Jefferson', 'Madison', 'Franklin', 'Highland', 'Sunset', 'River', 'Spring',
  'Meadow', 'Forest', 'Ridge', 'Valley', 'Chestnut', 'Magnolia', 'Dogwood', 'Hickory', 'Laurel', 'Aspen',
  'Juniper', 'Birch', 'Sycamore', 'Mill', 'Bridge', 'Market', 'Union', 'College', 'Prospect',
];
/** Street types, written sometimes in full and sometimes abbreviated, as real data is. */
export const SUFFIXES = ['St', 'Street', 'Ave', 'Avenue', 'Rd', 'Road', 'Dr', 'Drive', 'Blvd', 'Ln', 'Lane', 'Ct', 'Pl', 'Way'];
export const DIRECTIONS = ['N', 'S', 'E', 'W', 'North', 'West'];

export const FIRST_NAMES = [
  'James', 'Mary', 'Robert', 'Patricia', 'John', 'Jennifer', 'Michael', 'Linda', 'David', 'Elizabeth',
  'William', 'Barbara', 'Richard', 'Susan', 'Joseph', 'Jessica', 'Thomas', 'Sarah', 'Charles', 'Karen',
  'Christopher', 'Lisa', 'Daniel', 'Nancy', 'Matthew', 'Betty', 'Anthony', 'Sandra', 'Mark', 'Margaret',
  'Donald', 'Ashley', 'Steven', 'Kimberly', 'Andrew', 'Emily', 'Paul', 'Donna', 'Joshua', 'Michelle',
  'Kenneth', 'Carol', 'Kevin', 'Amanda', 'Brian', 'Melissa', 'George', 'Deborah', 'Timothy', 'Stephanie',
  'Ronald', 'Rebecca', 'Jason', 'Laura', 'Edward', 'Sharon', 'Jeffrey', 'Cynthia', 'Ryan', 'Kathleen',
  'Jacob', 'Amy', 'Gary', 'Angela', 'Nicholas', 'Shirley', 'Eric', 'Anna', 'Jonathan', 'Brenda',
  'Luis', 'Maria', 'Carlos', 'Sofia', 'Wei', 'Mei', 'Raj', 'Priya', 'Ahmed', 'Fatima',
];
export const LAST_NAMES = [
  'Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez',
  'Hernandez', 'Lopez', 'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin',
  'Lee', 'Perez', 'Thompson', 'White', 'Harris', 'Sanchez', 'Clark', 'Ramirez', 'Lewis', 'Robinson',
  'Walker', 'Young', 'Allen', 'King', 'Wright', 'Scott', 'Torres', 'Nguyen', 'Hill', 'Flores',
  'Green', 'Adams', 'Nelson', 'Baker', 'Hall', 'Rivera', 'Campbell', 'Mitchell', 'Carter', 'Roberts',
  'Gomez', 'Phillips', 'Evans', 'Turner', 'Diaz', 'Parker', 'Cruz', 'Edwards', 'Collins', 'Reyes',
  'Stewart', 'Morris', 'Morales', 'Murphy', 'Cook', 'Rogers', 'Gutierrez', "O'Brien", 'Patel', 'Chen',
];

export const PROPERTY_TYPES = ['Single Family Dwelling', 'Condo', 'Townhouse', 'Multi-Family Dwelling', 'Apartment', 'Land', 'Manufactured Home'];
export const OWNER_TYPES = ['Individual', 'Company', 'Trust'];
export const STATUSES = ['For Sale', 'Sold', 'Off Market', 'Pending', 'For Rent'];
export const ZONING = ['R-1', 'R-2', 'R-3', 'SF-3', 'MF-2', 'C-1', 'PUD'];
export const APPLIANCES = ['Dishwasher', 'Refrigerator', 'Microwave', 'Range', 'Washer', 'Dryer', 'Disposal', 'Oven'];
export const PARKING = ['Attached Garage', 'Detached Garage', 'Carport', 'Driveway', 'Street', 'Covered'];
export const FEATURE_KEYS = ['Heating', 'Cooling', 'Flooring', 'Roof', 'Exterior', 'Pool', 'View', 'Fireplace'];
export const FEATURE_VALUES = ['Central', 'Forced Air', 'Hardwood', 'Tile', 'Carpet', 'Composition', 'Brick', 'Stucco', 'Yes', 'City', 'Gas', 'Electric'];
export const BROKER_COMPANIES = ['Keller Williams Realty', 'RE/MAX', 'Coldwell Banker', 'Compass', 'Century 21', 'Sotheby\'s International Realty', 'eXp Realty'];
export const LENDERS = ['Wells Fargo Bank', 'Chase Bank', 'Bank of America', 'Quicken Loans', 'US Bank', 'Navy Federal Credit Union'];
export const SOURCE_HOSTS = ['www.zillow.com', 'www.redfin.com', 'www.realtor.com', 'www.trulia.com', 'www.homes.com'];

export const BUSINESS_WORDS = ['Blue', 'Lone Star', 'Golden', 'Summit', 'Riverside', 'Urban', 'Green Leaf', 'Sunrise', 'Capital', 'Harbor', 'Pioneer', 'Evergreen', 'Liberty', 'Silver', 'Red Rock'];
export const BUSINESS_KINDS: { noun: string; category: string; sic: string }[] = [
  { noun: 'Cafe', category: 'Coffee Shop', sic: '5812' },
  { noun: 'Grill', category: 'Restaurant', sic: '5812' },
  { noun: 'Bistro', category: 'Restaurants', sic: '5812' },
  { noun: 'Dental', category: 'Dentist', sic: '8021' },
  { noun: 'Auto Repair', category: 'Automotive Repair', sic: '7538' },
  { noun: 'Fitness', category: 'Gym', sic: '7991' },
  { noun: 'Hardware', category: 'Hardware Store', sic: '5251' },
  { noun: 'Books', category: 'Bookstore', sic: '5942' },
  { noun: 'Law Group', category: 'Lawyer', sic: '8111' },
  { noun: 'Bakery', category: 'Bakery', sic: '5461' },
  { noun: 'Salon', category: 'Beauty Salon', sic: '7231' },
  { noun: 'Pharmacy', category: 'Pharmacy', sic: '5912' },
];
export const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
export const HOURS = ['7:00AM-3:00PM', '8:00AM-5:00PM', '9:00AM-6:00PM', '10:00AM-9:00PM', '11:00AM-10:00PM', 'Closed'];
export const REVIEW_TITLES = ['Great service', 'Would come back', 'Not bad', 'Disappointing', 'Highly recommend', 'Friendly staff'];
export const REVIEW_TEXTS = [
  'Friendly people and quick service.',
  'Prices are fair, parking is tight.',
  'Waited a long time, but it was worth it.',
  'Clean, well run, and they remembered my name.',
  'Not what I expected from the reviews.',
];

export const BRANDS = ['Acme', 'Northwind', 'Contoso', 'Globex', 'Initech', 'Umbrella', 'Stark', 'Wayne', 'Hooli', 'Vandelay'];
export const PRODUCT_NOUNS: { noun: string; category: string }[] = [
  { noun: 'Wireless Headphones', category: 'Electronics' },
  { noun: 'Espresso Machine', category: 'Kitchen' },
  { noun: 'Running Shoes', category: 'Shoes' },
  { noun: 'Backpack', category: 'Luggage' },
  { noun: 'Desk Lamp', category: 'Home' },
  { noun: 'Smart Watch', category: 'Electronics' },
  { noun: 'Cast Iron Skillet', category: 'Kitchen' },
  { noun: 'Yoga Mat', category: 'Sports' },
  { noun: 'Rain Jacket', category: 'Clothing' },
  { noun: 'Bluetooth Speaker', category: 'Electronics' },
];
export const MERCHANTS = ['Walmart.com', 'Amazon.com', 'Target', 'Best Buy', 'eBay', 'Costco', 'Home Depot'];
export const CONDITIONS = ['new', 'used', 'refurbished'];
export const COLORS = ['Black', 'White', 'Red', 'Blue', 'Green', 'Gray', 'Silver'];
export const SIZES = ['S', 'M', 'L', 'XL', 'One Size'];
export const CARRIERS = ['Verizon', 'AT&T', 'T-Mobile', 'Sprint'];
export const PHONE_TYPES = ['mobile', 'landline', 'voip'];
export const JOB_TITLES = ['Engineer', 'Teacher', 'Nurse', 'Accountant', 'Manager', 'Sales Associate', 'Owner', 'Consultant', 'Designer'];
export const EMAIL_HOSTS = ['gmail.com', 'yahoo.com', 'outlook.com', 'icloud.com', 'aol.com'];
